"""A secured cluster end to end: the test node behind an HTTPS stand-in with a CA made for the test, mandatory
credentials and a restricted identity (tests/secure_stand_in.py; the local node has no x-pack). A challenge of each
family races through it with Rally's own --client-options (basic auth, API key), every request carrying credentials;
the report reads a metrics store behind TLS; make accuracy reaches the cluster through TLS; a missing privilege and
bad credentials are named before anything changes."""

import dataclasses
import json
import os
import subprocess

import pytest

from report.shared import host_load, races, store
from runners.shared.restore import NOTES_INDEX
from runners.shared.toxiproxy import PROXIES
from tests.conftest import (
    PYTHON,
    REPO,
    TEST_PORT,
    assert_clean,
    assert_refused_before_any_timed_task,
    data_root,
    doc_count,
    ensure_test_index,
    holds_the_test_corpus,
    http,
    launcher,
    run_race,
    track_params,
)
from tests.secure_stand_in import ADMIN, ADMIN_API_KEY, RESTRICTED, SecuredStandIn

STORE_PORT = 9262  # the secured metrics store's node: the suite's own, apart from a user's 9210
SECURED_PROXY = "cluster-metrics-secured"  # a Toxiproxy proxy of this module's, in front of the stand-in


@pytest.fixture(scope="module")
def secured(es_node, certs):
    with SecuredStandIn(TEST_PORT, certs) as stand_in:
        yield stand_in


def client_options(folder, certs, identity, **extra):
    """Rally's --client-options as a .json file (secrets stay off the command line): TLS verified with the test CA,
    and the identity's credentials."""
    auth = (
        {"api_key": identity.encoded_api_key}
        if identity.is_api_key
        else {"basic_auth_user": identity.name, "basic_auth_password": identity.password}
    )
    options = {"use_ssl": True, "verify_certs": True, "ca_certs": str(certs.ca_cert), "timeout": 60, **auth, **extra}
    path = folder / f"client-options-{identity.label.replace(':', '-')}.json"
    path.write_text(json.dumps({"default": options}))
    return f"--client-options={path}"


def race_through(stand_in, home, challenge, options, *extra, port=None):
    """A race through the stand-in; every request it saw in the meantime carried credentials."""
    before = stand_in.counters()
    race = run_race(home, challenge, options, *extra, port=port or stand_in.port)
    after = stand_in.counters()
    sent = after["requests"] - before["requests"]
    assert sent > 0 and after["with_credentials"] - before["with_credentials"] == sent, (before, after)
    return race


# basic authentication as the restricted role (cluster monitor, every privilege on cluster-metrics*): the ingest deletes
# its index by name and changes no cluster setting, so it needs no cluster manage (the families below race as ADMIN)
@pytest.mark.parametrize("identity", [RESTRICTED, ADMIN_API_KEY], ids=["basic-auth-restricted-role", "api-key"])
def test_ingest_through_tls_loses_nothing(shared_races, secured, certs, tmp_path, identity):
    race = race_through(secured, shared_races.home, "ingest-baseline", client_options(tmp_path, certs, identity))
    assert_clean(race, ["check-privileges", "ingest"])
    assert doc_count() == 5000 and holds_the_test_corpus(shared_races.home)


@pytest.mark.parametrize(
    "challenge,identity,params",
    [
        ("production-comparison", ADMIN_API_KEY, {}),
        # light cells (A; D_hdr with 1 digit; no extra compression), before the load race: the 1 GB node's heap is the
        # rest of the suite's too, and a parent-breaker trip at the node's own limit fails a cell
        (
            "aggregation-memory",
            ADMIN_API_KEY,
            {"memory_variants": ["A"], "memory_transports": ["msearch"], "memory_hdr_digits": [1], "memory_tdigest_compression": [100]},
        ),
        # one cell's calibration, share and step (every cell: six times the steps, the same requests through TLS)
        ("coverage-load", ADMIN, {"load_variants": ["D_td"], "load_transports": ["serial"], "load_steps": [100]}),
    ],
    ids=["query", "costs", "load"],
)
def test_each_family_races_through_the_secured_cluster(
    shared_races, secured, certs, tmp_path, challenge, identity, params
):  # parameters: pytest's fixtures and parametrization
    ensure_test_index(shared_races)
    settings = http("GET", "/_cluster/settings?flat_settings=true")[1]
    race = race_through(
        secured, shared_races.home, challenge, client_options(tmp_path, certs, identity), f"--track-params={json.dumps(params)}"
    )
    assert_clean(race, ["check-privileges"])
    assert http("GET", "/_cluster/settings?flat_settings=true")[1] == settings  # the breaker's bisection put it back


def test_the_network_family_races_through_a_proxy_in_front_of_the_secured_cluster(shared_races, secured, certs, tmp_path, toxiproxy):
    ensure_test_index(shared_races)
    toxiproxy.ensure_proxy(SECURED_PROXY, "127.0.0.1:9293", f"127.0.0.1:{secured.port}")
    try:
        params = track_params(rtt_ms=[0, 20], rtt_transports=["msearch"], network_proxy=SECURED_PROXY)
        race = race_through(secured, shared_races.home, "rtt-sweep", client_options(tmp_path, certs, ADMIN), params, port=9293)
    finally:
        toxiproxy._call("DELETE", f"/proxies/{SECURED_PROXY}")
    assert_clean(race, ["check-privileges", "set-rtt-20ms"])
    assert toxiproxy.toxics(PROXIES["http"]) == {}


def test_a_role_with_what_the_challenge_needs_races_it(shared_races, secured, certs, tmp_path):
    ensure_test_index(shared_races)
    race = race_through(secured, shared_races.home, "production-comparison", client_options(tmp_path, certs, RESTRICTED))
    assert_clean(race, ["check-privileges"])
    assert ("restricted", "POST", "/_security/user/_has_privileges", 200) in secured.log
    # the host-load sampler asked the nodes through TLS as the user (the worker's header, the user's CA), and was let
    record = races.load(race.folder())
    assert host_load.nodes_error(record) is None and host_load.nodes_table(record), host_load.lines(record)[:3]
    assert any(e[:2] == ("restricted", "GET") and e[2].startswith("/_nodes/stats") and e[3] == 200 for e in secured.log)


@pytest.mark.smoke
@pytest.mark.parametrize(
    "challenge,needed_by",
    [
        ("aggregation-memory", "breaker-floor: bisects the request breaker's limit"),
        ("source-large", "delete-index: deletes the index it is about to create; Rally's runner lifts"),
    ],
)
def test_a_missing_privilege_is_named_before_anything_changes(shared_races, secured, certs, tmp_path, challenge, needed_by):
    """The restricted role has no cluster manage: aggregation-memory bisects a cluster setting, and Rally's own
    delete-index (source-large's index at its end) lifts a transient one around the delete. Each stops at its first
    task naming the privilege, what needs it and the challenge; the cluster is as it was."""
    ensure_test_index(shared_races)
    http("DELETE", f"/{NOTES_INDEX}")
    settings = http("GET", "/_cluster/settings?flat_settings=true")[1]
    seen = len(secured.log)
    race = race_through(secured, shared_races.home, challenge, client_options(tmp_path, certs, RESTRICTED))
    assert_refused_before_any_timed_task(
        race,
        f"Challenge [{challenge}] needs privileges that user [restricted] lacks",
        f"cluster privilege manage ({needed_by}",
        "Nothing was changed on the cluster",
    )
    sent = secured.log[seen:]
    assert not [e for e in sent if e.method in ("PUT", "POST", "DELETE") and "_has_privileges" not in e.path], sent
    assert http("GET", "/_cluster/settings?flat_settings=true")[1] == settings
    assert http("HEAD", f"/{NOTES_INDEX}")[0] == 404 and holds_the_test_corpus(shared_races.home)


def test_bad_credentials_are_named_as_such(shared_races, secured, certs, tmp_path):
    """Rally's own version check (GET /) meets a 401 before any track code runs: its error names the 401 and
    Elasticsearch's reason. make race checks the cluster first with the live-cluster tools' client, which names it
    as bad credentials with the fix. The password appears in neither."""
    ensure_test_index(shared_races)
    options = client_options(tmp_path, certs, dataclasses.replace(ADMIN, password="not-the-password"))
    race = run_race(shared_races.home, "production-comparison", options, port=secured.port)
    assert race.returncode != 0
    assert "401" in race.output and "unable to authenticate user [elastic]" in race.output, race.output[-2000:]
    checked = subprocess.run(
        [PYTHON, "-m", "report.shared.cluster", "--target-hosts", f"127.0.0.1:{secured.port}", options],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert checked.returncode != 0 and checked.stderr.startswith("bad credentials: https://127.0.0.1:"), checked.stderr
    assert "basic_auth_password" in checked.stderr and "Traceback" not in checked.stderr
    assert "not-the-password" not in race.output + checked.stdout + checked.stderr
    reached = subprocess.run(
        [PYTHON, "-m", "report.shared.cluster", "--target-hosts", f"127.0.0.1:{secured.port}", client_options(tmp_path, certs, ADMIN)],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert reached.returncode == 0 and reached.stdout.startswith("Elasticsearch 8."), reached.stdout + reached.stderr


def accuracy(secured, options, tmp_path, home):
    return subprocess.run(
        [PYTHON, "-m", "report.accuracy", "--target-hosts", f"127.0.0.1:{secured.port}", options, "--out", str(tmp_path)]
        + ["--data-root", str(data_root(home))],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=600,
    )


def test_accuracy_through_tls(shared_races, secured, certs, other_certs, tmp_path):
    ensure_test_index(shared_races)
    done = accuracy(secured, client_options(tmp_path, certs, RESTRICTED), tmp_path, shared_races.home)
    assert done.returncode == 0, done.stdout + done.stderr
    found = json.loads((tmp_path / "accuracy.json").read_text())
    assert found and "t-digest" in json.dumps(found)
    # the same cluster with a CA it was not signed by, and with a wrong password: each named, no traceback
    untrusted = accuracy(secured, client_options(tmp_path, other_certs, ADMIN), tmp_path, shared_races.home)
    assert untrusted.returncode != 0 and "TLS to" in untrusted.stderr and "ca_certs" in untrusted.stderr, untrusted.stderr
    wrong = dataclasses.replace(ADMIN, password="not-the-password")
    refused = accuracy(secured, client_options(tmp_path, certs, wrong), tmp_path, shared_races.home)
    assert refused.returncode != 0 and "bad credentials" in refused.stderr and "not-the-password" not in refused.stderr
    assert "Traceback" not in untrusted.stderr + refused.stderr


@pytest.fixture(scope="module")
def secured_store(es_node, certs, rally_home):
    """Rally's metrics store on a node of its own behind a second stand-in, and a Rally configuration that names it
    the way a team's does: datastore.secure, user and password, the CA in datastore.ssl.certificate_authorities."""
    started = launcher("start", "--heap", "512m", port=STORE_PORT)
    assert started.returncode == 0, started.stdout + started.stderr
    try:
        with SecuredStandIn(STORE_PORT, certs) as stand_in:
            path = store.write_config(rally_home, "127.0.0.1", stand_in.port)
            secure = {
                "datastore.secure": "True",
                "datastore.user": ADMIN.name,
                "datastore.password": ADMIN.password,
                "datastore.ssl.verification_mode": "full",
                "datastore.ssl.certificate_authorities": str(certs.ca_cert),
            }
            lines = [
                f"{k} = {secure[k]}" if (k := line.split("=")[0].strip()) in secure else line for line in path.read_text().splitlines()
            ]
            missing = [f"{k} = {v}" for k, v in secure.items() if not any(line.startswith(k + " ") for line in lines)]
            index = next(i for i, line in enumerate(lines) if line.startswith("datastore.type"))
            path.write_text("\n".join(lines[: index + 1] + missing + lines[index + 1 :]) + "\n")
            found = store.Store.from_config(rally_home, store.CONFIG_NAME)
            found.prepare_local_node()
            yield stand_in, found
    finally:
        stopped = launcher("stop", port=STORE_PORT)
        assert stopped.returncode == 0, stopped.stdout + stopped.stderr


def test_the_report_reads_a_metrics_store_behind_tls(shared_races, secured_store, secured, certs, tmp_path):
    stand_in, found = secured_store
    ensure_test_index(shared_races)
    options = client_options(tmp_path, certs, ADMIN)
    race = run_race(shared_races.home, "production-comparison", options, f"--configuration-name={store.CONFIG_NAME}", port=secured.port)
    assert_clean(race)
    race_id = race.race["race-id"]
    from_store = races.Stored(found).race(race_id[:8])
    assert from_store.race_id == race_id and from_store.source == f"Rally's metrics store at https://127.0.0.1:{stand_in.port}"
    assert from_store.samples.times and all(from_store.samples.times.values())
    report = subprocess.run(
        [PYTHON, "-m", "report", "--race", race_id[:8], "--rally-home", str(shared_races.home), "--configuration-name", store.CONFIG_NAME]
        + ["--out", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=600,
        env={**os.environ, "RALLY_HOME": str(shared_races.home)},
    )
    assert report.returncode == 0, report.stdout + report.stderr
    assert ADMIN.password not in report.stdout + report.stderr
    assert stand_in.counters()["per_identity"].get(ADMIN.label, 0) > 0  # Rally and the report both went through TLS


def test_a_store_with_a_ca_the_report_does_not_trust_is_named(secured_store, rally_home, certs, other_certs, tmp_path):
    path = store.config_path(rally_home, store.CONFIG_NAME)
    text = path.read_text()
    try:
        path.write_text(text.replace(str(certs.ca_cert), str(other_certs.ca_cert)))
        done = subprocess.run(
            [PYTHON, "-m", "report", "--rally-home", str(rally_home), "--configuration-name", store.CONFIG_NAME, "--out", str(tmp_path)],
            capture_output=True,
            text=True,
            cwd=REPO,
            timeout=300,
        )
    finally:
        path.write_text(text)
    assert done.returncode != 0 and "TLS to" in done.stderr + done.stdout and "Traceback" not in done.stderr, done.stderr
    assert "make metrics-store" not in done.stderr.split("TLS to")[1].split(".")[0]


@pytest.mark.parametrize("target", ["race", "accuracy", "validation-proof", "rtt-sweep", "network-faults"])
def test_make_passes_the_client_options_without_echoing_them(target):
    """CLIENT_OPTIONS reaches every race and live-cluster tool as --client-options, read by the shell from the
    environment: what make prints never holds the secret."""
    secret = "basic_auth_user:'rally',basic_auth_password:'sekrit-value'"
    shown = subprocess.run(["make", "-n", target], capture_output=True, text=True, cwd=REPO, env={**os.environ, "CLIENT_OPTIONS": secret})
    assert shown.returncode == 0, shown.stderr
    commands = [line for line in shown.stdout.replace("\\\n", " ").splitlines() if "esrally race" in line or "-m report." in line]
    assert commands and all('--client-options="$CLIENT_OPTIONS"' in line for line in commands), shown.stdout
    assert "sekrit-value" not in shown.stdout + shown.stderr
