"""Run by tests/test_load_drivers.py inside a private network namespace, never collected outside it.

The topology (local-es/load_driver_hosts.py): this namespace is the cluster's, with the node under test and the
metrics store (HTTP also on CLUSTER_ADDRESS, a bridge's address) and the coordinator's esrallyd; two load-driver
hosts, ld-1 and ld-2, each in network, UTS and mount namespaces of its own on the bridge, with its own esrallyd and
Rally home, the corpus at the coordinator's path, and the coordinator's races folder replaced by a folder of its own
(what its clients record stays on "its disk"). The races run from here with --load-driver-hosts=ld-1,ld-2 into the
store; the report from the store is checked against what each host did: its own record folder and Rally's log.
"""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from esrally.driver.driver import calculate_worker_assignments

from localnode import load_driver_hosts as topology
from report.__main__ import compare_report
from report.__main__ import main as report_main
from report.shared import races, readers, store
from report.studies import coverage, coverage_answer
from report.studies import hosts as host_report
from report.studies import ingest
from runners.contracts import records
from runners.contracts.corpus import data_root, races_root
from runners.contracts.queries import TRANSPORTS
from runners.contracts.took_files import bulk_lines
from runners.shared.hosts import HOST_KEY
from runners.studies import load
from tests.conftest import REPO
from tests.conftest import assert_clean as assert_clean_here
from tests.conftest import doc_count, http, launcher, run_race, run_rally, start_race, thespian_log, wait_for_our_rally

pytestmark = pytest.mark.integration


TARGET_PORT, STORE_PORT = 9330, 9331  # this namespace's own; their data apart from the suite's node (9250)
CLUSTER = topology.CLUSTER_ADDRESS
TARGET = f"{CLUSTER}:{TARGET_PORT}"
ESRALLYD = str(Path(sys.executable).with_name("esrallyd"))
HOSTS = {i: topology.host_address(i) for i in (1, 2)}
NAMES = {i: topology.host_name(i) for i in (1, 2)}
TWO_HOSTS = f"--load-driver-hosts={HOSTS[1]},{HOSTS[2]}"
STORE = f"--configuration-name={store.CONFIG_NAME}"
EPOCHS = 2  # of the suite's small corpus's 5: enough to show rows per epoch, short enough for CI
TEST_MODE_DOCS = 1000  # documents of a test-mode epoch file
VARIANTS_RACED = ["D_td", "D_hdr"]  # the production pair: six cells of the eighteen keep the race short
# the wait for the killed host's client to take the calibration: the live one takes it within milliseconds, and the
# race waits the whole of it
SHARE_TIMEOUT = 8


def params(**values):
    return f"--track-params={json.dumps(values)}"


@pytest.fixture(scope="module")
def home():
    return Path(os.environ["RALLY_HOME"])  # the outer suite's Rally home, with its small corpus


def esrallyd(prefix, rally_home, address, *args):
    """esrallyd on a host (prefix: the command that enters it), with that host's Rally home and address; its output
    into a file, not a pipe: the daemon's actor processes keep it open, a pipe would never end."""
    output = Path(rally_home) / "esrallyd.out"
    Path(thespian_log(Path(rally_home))["THESPLOG_FILE"]).parent.mkdir(parents=True, exist_ok=True)
    # each host's Thespian log in its Rally home: a worker that "exited prematurely" on a host is explained only there
    env = dict(os.environ, RALLY_HOME=str(rally_home), THESPIAN_BASE_IPADDR=address, **thespian_log(Path(rally_home)))
    with output.open("w") as out:
        returncode = subprocess.run([*prefix, ESRALLYD, *args], env=env, stdout=out, stderr=out, timeout=300).returncode
    return returncode, output.read_text()


def load_driver_home(home, folder):
    """A load-driver host's Rally home: each of the coordinator's Rally configurations (rally.ini, and the store's:
    Rally loads the one of the race's --configuration-name on every host) with the corpus at the coordinator's path."""
    if not (home / ".rally" / "rally.ini").is_file():
        run_rally(home, "list", "races", "--offline")  # Rally writes its rally.ini on first use
    (folder / ".rally").mkdir(parents=True, exist_ok=True)
    for ini in (home / ".rally").glob("rally*.ini"):
        lines = [
            f"local.dataset.cache = {data_root(home)}" if line.startswith("local.dataset.cache") else line
            for line in ini.read_text().splitlines()
        ]
        (folder / ".rally" / ini.name).write_text("\n".join(lines) + "\n")
    return folder


def assert_clean(race, expected_tasks=()):
    """conftest's assert_clean, and where it fails what each load-driver host's own Rally and Thespian logged: the
    coordinator's log says only that a worker there "exited prematurely" (CI saw it once, 2026-12-02, not here)."""
    try:
        assert_clean_here(race, expected_tasks)
    except AssertionError as e:
        raise AssertionError(f"{e}\n{TOPOLOGY[0].explained() if TOPOLOGY else ''}") from None


TOPOLOGY = []  # the module's cluster, once up


class Topology:
    def __init__(self, home, hosts, homes):
        self.home, self.hosts, self.homes = home, hosts, homes

    def daemon(self, i, *args):
        return esrallyd(self.hosts.command(i, []), self.homes[i], HOSTS[i], *args)

    def records(self, i, race_id):
        """Host i's own record folder of a race (its disk: the coordinator's races folder is another there)."""
        return self.hosts.private_copy(i) / race_id / records.RECORD_DIR

    def log(self, i):
        path = self.homes[i] / ".rally" / "logs" / "rally.log"
        return path.read_text(errors="replace") if path.is_file() else ""

    def explained(self):
        """Each host's ERROR records of its Rally log and what its Thespian log says of exits and signals (the tails)."""
        said = []
        for i in (1, 2):
            log = self.log(i).splitlines()
            errors = [line for line in log if " ERROR " in line or "Traceback" in line][-30:]
            actors_path = Path(thespian_log(self.homes[i])["THESPLOG_FILE"])
            actors = actors_path.read_text(errors="replace").splitlines() if actors_path.is_file() else []
            exits = [line for line in actors if re.search(r"exit|signal|died|dead|error|warn", line, re.IGNORECASE)][-40:]
            said.append(f"--- {NAMES[i]}: Rally's errors\n" + "\n".join(errors) + f"\n--- {NAMES[i]}: Thespian\n" + "\n".join(exits))
        return "\n".join(said)

    def start_daemons(self, hosts=(1, 2)):
        for i in hosts:
            returncode, text = self.daemon(i, "start", f"--node-ip={HOSTS[i]}", f"--coordinator-ip={CLUSTER}")
            assert returncode == 0, text

    def stop_daemons(self):
        for i in (1, 2):
            self.daemon(i, "stop")


@pytest.fixture(scope="module")
def cluster(home, tmp_path_factory):
    """The node, the store, the coordinator's daemon and the two hosts with theirs; all stopped at the end."""
    base = tmp_path_factory.mktemp("load-driver-hosts")
    hosts = topology.Hosts.up(2, base / "state", private=[races_root(home)])
    started, coordinator = [], None
    try:
        for port, heap in ((TARGET_PORT, "1g"), (STORE_PORT, "512m")):
            result = launcher("start", "--heap", heap, "--also-bind", CLUSTER, port=port)
            assert result.returncode == 0, result.stdout + result.stderr
            started.append(port)
        store.main(["--port", str(STORE_PORT), "--rally-home", str(home)])  # as make metrics-store does
        homes = {i: load_driver_home(home, base / f"{NAMES[i]}-home") for i in (1, 2)}
        logging_config = home / ".rally" / "logging.json"
        kept_logging = logging_config.read_text()
        # Rally logs which worker it puts on which host, and with how many clients, at DEBUG: the coordinator's log says it
        debug = json.loads(kept_logging)
        debug["loggers"]["esrally.driver.driver"] = {"level": "DEBUG"}
        logging_config.write_text(json.dumps(debug, indent=2))
        returncode, text = esrallyd([], home, CLUSTER, "start", f"--node-ip={CLUSTER}", f"--coordinator-ip={CLUSTER}")
        assert returncode == 0, text
        coordinator = True
        up = Topology(home, hosts, homes)
        up.start_daemons()
        TOPOLOGY.append(up)
        yield up
    finally:
        if coordinator:
            Topology(home, hosts, homes).stop_daemons()
            esrallyd([], home, CLUSTER, "stop")
            logging_config.write_text(kept_logging)
        store.config_path(home, store.CONFIG_NAME).unlink(missing_ok=True)
        for port in started:
            launcher("stop", port=port)
        hosts.down()


@pytest.fixture(scope="module")
def metrics_store(home, cluster):
    return store.Store.from_config(home, store.CONFIG_NAME)


def cluster_state():
    """What a race must leave as it found it: persistent and transient settings, and the indices but Rally's."""
    _, settings = http("GET", "/_cluster/settings?flat_settings=true", port=TARGET_PORT)
    _, indices = http("GET", "/_cat/indices?format=json&h=index&expand_wildcards=all", port=TARGET_PORT)
    return settings, sorted(i["index"] for i in indices if not i["index"].startswith("."))


def test_ingest_tuned_splits_its_clients_over_both_hosts(cluster, metrics_store, home):
    """ingest-tuned's four bulk clients: Rally puts clients 0 and 1 on ld-1, 2 and 3 on ld-2. The index holds every
    document; each host's disk holds only its own clients' bulk tooks; the report from the store counts all of them,
    and says which host ran which clients."""
    raced = run_race(home, "ingest-tuned", TWO_HOSTS, STORE, params(epochs=EPOCHS, tuned_bulk_size=100), target_hosts=TARGET)
    assert_clean(raced)
    race_id = raced.race["race-id"]
    assert doc_count(port=TARGET_PORT) == EPOCHS * TEST_MODE_DOCS

    race = races.Stored(metrics_store).race(race_id)
    by_host = race.hosts["ingest"]  # one task over every epoch; its epochs' boundaries kept through the cluster
    assert {host: c["clients"] for host, c in by_host.items()} == {NAMES[1]: [0, 1], NAMES[2]: [2, 3]}
    assert ingest.ingest_of(race)["count"] == {"actual": EPOCHS * TEST_MODE_DOCS, "expected": EPOCHS * TEST_MODE_DOCS}
    assert [row["docs"] for row in ingest.ingest_of(race)["epochs"]] == [TEST_MODE_DOCS] * EPOCHS  # each epoch exact at its boundary
    # each host's own disk: the took files of its own clients only, and the store's table counts both hosts'
    for epoch, row in enumerate(ingest.ingest_of(race)["epochs"], 1):
        on_disk = {i: bulk_lines(str(cluster.records(i, race_id)), "ingest", epoch) for i in (1, 2)}
        assert sorted(Path(name).stem for name in on_disk[1]) == [f"epoch-{epoch}-client-0", f"epoch-{epoch}-client-1"]
        assert sorted(Path(name).stem for name in on_disk[2]) == [f"epoch-{epoch}-client-2", f"epoch-{epoch}-client-3"]
        each = {i: sum(len(lines) for lines in on_disk[i].values()) for i in (1, 2)}
        assert each[1] > 0 and each[2] > 0 and row["bulk-requests"] == each[1] + each[2]
    assert sum(row["bulk-requests"] for row in ingest.ingest_of(race)["epochs"]) == sum(c["samples"] for c in by_host.values())
    header, body = host_report.hosts_table(race)
    assert [row[1] for row in body if row[0] == "ingest"] == [NAMES[1], NAMES[2]]
    # Rally's own log: the coordinator's puts workers 0 and 1 (a client each) on ld-1, 2 and 3 on ld-2; each host's
    # own log has its workers running the epochs' bulks
    allocated = [line.split(" DEBUG ")[-1] for line in raced.log.splitlines() if "Allocating worker" in line]
    expected, worker = [], 0  # Rally's own split: a worker per core (this machine's count) on each host
    for assignment in calculate_worker_assignments([{"host": HOSTS[i], "cores": os.cpu_count()} for i in (1, 2)], 4):
        for clients in filter(None, assignment["workers"]):
            expected.append(f"Allocating worker [{worker}] on [{assignment['host']}] with [{len(clients)}] clients.")
            assert f"Worker[{worker}] executing tasks: ['ingest']" in cluster.log(2 if assignment["host"] == HOSTS[2] else 1)
            worker += 1
    assert allocated == expected, allocated
    print(f"\nRALLY-LOG {race_id}: " + "; ".join(allocated))


def test_coverage_load_steps_run_on_both_hosts_at_their_calibrated_rate(cluster, metrics_store, home):
    """The calibration runs on ld-1 (one client); its share task hands it to ld-2 through an index of the race's own,
    gone after the race; both hosts' step clients pace themselves from it, and the report gives each host's share of
    the target and the rate it reached."""
    before = cluster_state()
    load_params = params(
        epochs=EPOCHS, load_variants=["D_td"], load_transports=["msearch"], load_steps=[50, 100], load_clients=2, load_iterations=4
    )
    raced = run_race(home, "coverage-load", TWO_HOSTS, STORE, load_params, target_hosts=TARGET)
    assert_clean(raced, ["coverage-D_td-msearch-load-calibration-share"])
    race_id = raced.race["race-id"]
    calibration = "coverage-D_td-msearch-load-calibration"
    # the calibration on each host's disk: measured on ld-1, copied to ld-2
    seconds = {i: load.calibration_seconds(str(cluster.records(i, race_id)), calibration) for i in (1, 2)}
    assert seconds[1] and seconds[2] == pytest.approx(seconds[1], abs=1e-6)
    assert cluster_state() == before  # the share index is gone

    race = races.Stored(metrics_store).race(race_id)
    assert set(race.hosts[calibration]) == {NAMES[1]}
    share = race.hosts[f"{calibration}-share"]
    assert {host: c["clients"] for host, c in share.items()} == {NAMES[1]: [0], NAMES[2]: [1]}
    header, body = host_report.hosts_table(race)
    for percent in (50, 100):
        step = f"coverage-D_td-msearch-load-{percent}pct"
        assert {host: c["clients"] for host, c in race.hosts[step].items()} == {NAMES[1]: [0], NAMES[2]: [1]}
        rows = {row[1]: row for row in body if row[0] == step}
        target = host_report.load_steps(race)[step]["target_per_s"]
        assert rows[NAMES[1]][5] == pytest.approx(target / 2) and rows[NAMES[2]][5] == pytest.approx(target / 2), (body, race.op_metrics())
        assert rows["all hosts"][5] == pytest.approx(target)
        assert rows["all hosts"][6] == pytest.approx(rows[NAMES[1]][6] + rows[NAMES[2]][6]) and rows[NAMES[2]][6] > 0


def test_production_comparison_validates_every_cell_on_both_hosts(cluster, metrics_store, home, tmp_path):
    """Two clients a cell (blocked schedule): each cell's coverages run on both hosts, and every one is validated."""
    raced = run_race(
        home, "production-comparison", TWO_HOSTS, STORE, params(epochs=EPOCHS, schedule="blocked", coverage_clients=2), target_hosts=TARGET
    )
    assert_clean(raced)
    race = races.Stored(metrics_store).race(raced.race["race-id"])
    header, body = coverage.validation_table(race)
    # each cell's timed coverages and the settling's ones before them (settle/<cell>), all checked, none failed
    cells = ["coverage-D_hdr-msearch", "coverage-D_hdr-terms", "coverage-D_td-msearch", "coverage-D_td-serial"]
    assert [row[0] for row in body] == cells + [f"settle/{cell}" for cell in cells], body
    assert all(coverages >= 2 and checks > 0 and failed == 0 for _, coverages, checks, failed, _ in body), body
    for cell in (("D_td", "serial"), ("D_td", "msearch"), ("D_hdr", "msearch"), ("D_hdr", "terms")):
        assert set(race.hosts[readers.study_task(race, cell)]) == {NAMES[1], NAMES[2]}, cell
    assert report_main(["--race", race.race_id[:8], "--configuration-name", store.CONFIG_NAME, "--out", str(tmp_path)]) == 0
    report = (tmp_path / race.race_id / "report.md").read_text()
    assert "## Load-driver hosts: what each host's clients ran" in report


def test_the_interleaved_schedule_is_refused_on_two_hosts_naming_the_fix(cluster, home):
    refused = run_race(home, "production-comparison", TWO_HOSTS, params(epochs=EPOCHS), target_hosts=TARGET)
    assert refused.returncode != 0
    assert "schedule:blocked" in refused.output and HOSTS[1] in refused.output and HOSTS[2] in refused.output, refused.output[-3000:]
    assert refused.race is None


def test_a_host_without_the_corpus_names_itself_and_the_fix(cluster, home, tmp_path):
    """ld-2's disk has nothing at the coordinator's corpus path: the race stops before any task, naming ld-2."""
    empty = tmp_path / "empty"
    empty.mkdir()
    hide = subprocess.run(cluster.hosts.command(2, ["mount", "--bind", str(empty), str(data_root(home))]), capture_output=True, text=True)
    assert hide.returncode == 0, hide.stderr
    try:
        refused = run_race(home, "query-decomposition", TWO_HOSTS, params(epochs=EPOCHS, schedule="blocked"), target_hosts=TARGET)
    finally:
        subprocess.run(cluster.hosts.command(2, ["umount", str(data_root(home))]), check=True)
    assert refused.returncode != 0
    assert f"(host {NAMES[2]})" in refused.output and "make corpus" in refused.output, refused.output[-3000:]
    assert refused.race is None or not refused.race.get("results", {}).get("op_metrics")


def test_a_load_driver_killed_mid_race_ends_it_with_an_error_naming_the_hosts_and_leaves_the_cluster_as_it_was(cluster, home):
    """ld-2's daemon and its workers killed (SIGKILL, every process on ld-2) the moment the calibration's share index
    appears, while ld-1's client waits for ld-2's to take it. Rally would notice the lost host only when thespian's
    convention times it out (about 22 minutes); the share ends the race after load_share_timeout with the error
    naming the host that took it, the index is gone and every setting as before. The race, which this test
    interrupts (SIGINT) if it outlives the wait, starts with the default signal dispositions (start_race,
    tests/signals.py), whatever the suite was launched with; ld-2's processes are killed with SIGKILL, which no
    disposition or mask holds off."""
    before = cluster_state()
    share_index = f"{load.SHARE_PREFIX}*"
    one_step = params(
        epochs=EPOCHS, load_variants=["D_td"], load_transports=["msearch"], load_steps=[1], load_clients=2, load_share_timeout=SHARE_TIMEOUT
    )
    race = start_race(home, "coverage-load", TWO_HOSTS, one_step, target_hosts=TARGET)
    killed, output = [], ""
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and race.poll() is None:
            status, found = http("GET", f"/_cat/indices/{share_index}?format=json&expand_wildcards=all", port=TARGET_PORT)
            if status == 200 and found:
                break
            time.sleep(0.02)
        assert race.poll() is None, race.stdout.read()
        killed = cluster.hosts.processes(2)
        for pid in killed:
            os.kill(pid, signal.SIGKILL)
        output, _ = race.communicate(timeout=300)
    finally:
        if race.poll() is None:
            race.send_signal(signal.SIGINT)
            race.wait(timeout=120)
    wait_for_our_rally()
    assert killed and race.returncode != 0, output[-3000:]
    print(f"\nKILLED ld-2 ({len(killed)} processes): {output.strip().splitlines()[-12:]}")
    assert "Cannot race" in output and f"1 of 2 clients took the calibration within {SHARE_TIMEOUT} s" in output, output[-3000:]
    assert f"on {NAMES[1]} (1): the others' load-driver host is gone or its esrallyd stopped" in output, output[-3000:]
    assert cluster_state() == before
    cluster.start_daemons([2])  # ld-2 back for what follows


def test_a_race_through_the_coordinators_daemon_into_the_store_reports_what_its_files_report(cluster, metrics_store, home, tmp_path):
    """One load driver, the coordinator's own daemon: the race's folder is on this namespace's disk. The report from
    the store alone (that folder moved away meanwhile) has the tables of the one built from the folder."""
    raced = run_race(
        home, "full", f"--load-driver-hosts={CLUSTER}", STORE, params(variants=VARIANTS_RACED, epochs=EPOCHS), target_hosts=TARGET
    )
    assert_clean(raced)
    assert "Try joining already running actor system" in raced.log  # the race ran in the daemon's actor system
    race_id = raced.race["race-id"]

    folder = races_root(home) / race_id
    folder.rename(tmp_path / "away")
    try:
        from_store = races.Stored(metrics_store).race(race_id[:8])
        assert (
            report_main(
                ["--race", race_id[:8], "--rally-home", str(home), "--configuration-name", store.CONFIG_NAME, "--out", str(tmp_path)]
            )
            == 0
        )
    finally:
        (tmp_path / "away").rename(folder)
    from_files = races.Files(home).race(race_id)
    assert from_store.race_id == race_id and from_store.path is None
    assert from_store.source == f"Rally's metrics store at http://127.0.0.1:{STORE_PORT}"

    # the track's own records: per-epoch ingest cost and every coverage's validation counts
    assert len(ingest.ingest_of(from_files)["epochs"]) == EPOCHS and all(
        row["bulk-requests"] > 0 for row in ingest.ingest_of(from_files)["epochs"]
    )
    assert ingest.ingest_table(from_store) == ingest.ingest_table(from_files)
    validation = coverage.validation_table(from_files)
    settled = [row for row in validation[1] if row[0].startswith("settle/")]
    assert validation == coverage.validation_table(from_store) and len(validation[1]) == 2 * len(settled) == 2 * len(VARIANTS_RACED) * len(
        TRANSPORTS
    )
    assert coverage_answer.took_table(from_store) == coverage_answer.took_table(from_files)
    assert all(coverages >= 1 and checks > 0 and failed == 0 for _, coverages, checks, failed, _ in validation[1])

    cells = readers.coverage_cells(from_files)
    assert len(cells) == len(VARIANTS_RACED) * len(TRANSPORTS) and readers.coverage_cells(from_store) == cells
    for v, t in cells:
        assert len(from_store.samples.of(readers.study_task(from_store, (v, t)))) == 1  # test mode: one measured iteration
    header, body = coverage.coverage_table(from_store)
    files_header, files_body = coverage.coverage_table(from_files)
    assert header == files_header and sum("interval" in name for name in header) == len(TRANSPORTS)
    assert all("n=1 (interval from 6 samples)" in row for row in body + files_body)
    for race, rows in ((from_store, body), (from_files, files_body)):
        for row in rows:
            for t in TRANSPORTS:
                (sample,) = race.samples.of(readers.study_task(race, (row[0], t)))
                assert row[header.index(f"{t} median (ms)")] == sample
    assert [[row[header.index(f"{t} p90 (ms)")] for t in TRANSPORTS] for row in body] == [
        [row[header.index(f"{t} p90 (ms)")] for t in TRANSPORTS] for row in files_body
    ]

    def meta(task):
        query = {"bool": {"filter": [{"term": {"race-id": race_id}}, {"term": {"name": "service_time"}}, {"term": {"task": task}}]}}
        return [hit["_source"]["meta"] for hit in metrics_store._search("rally-metrics-*", {"query": query, "size": 100})["hits"]["hits"]]

    # each epoch's cost rides on the sample of the ingest's bulk that recorded it (client 0's first bulk of the next
    # epoch, or its last bulk): the record operation, from which the report rebuilds ingest.json
    written = [op["data"] for m in meta("ingest") for op in json.loads(m.get(records.META_KEY, "[]")) if op.get("write") == records.INGEST]
    epoch_cost = next(row for data in written for row in data["epochs"] if row["epoch"] == 2)
    assert epoch_cost["docs"] == TEST_MODE_DOCS and epoch_cost["index-ms"] >= 0
    sample = meta("coverage-D_td-msearch")[0]
    assert sample["success"] is True and sample["checks"] > 0 and sample["failed-checks"] == 0 and sample["requests"] == 1
    assert {m[HOST_KEY] for m in meta("coverage-D_td-msearch")} == {os.uname().nodename}  # the coordinator's host ran it

    report = (tmp_path / race_id / "report.md").read_text()
    assert f"read from Rally's metrics store at http://127.0.0.1:{STORE_PORT}" in report and "95% interval" in report
    assert "## Ingest per epoch" in report and "## Validation" in report
    assert "## Load-driver hosts" not in report  # one host
    _, text = compare_report([from_store, from_store], tmp_path)
    assert text.count("no verdict: 1 samples, a verdict needs 7 on each side") == len(cells)
