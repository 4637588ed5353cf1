"""Local Toxiproxy: installs the pinned release with `go install` on first use and runs its server on loopback.

Commands: install, start [--api-port 8474], stop, status, proxy --role http|remote --listen PORT --upstream PORT.
Stdlib only, like esnode.py. The binaries go to .tools/toxiproxy-<version>/ (git-ignored), Go's module and build
caches to .tools/go/ (a new machine's HOME may be empty or read-only). Only the server this launcher started, as
recorded in its state file, is ever stopped.
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from localnode.shared import HERE, LauncherError
from runners.shared.toxiproxy import DEFAULT_API, PROXIES, VERSION, Toxiproxy, ToxiproxyError

MODULE = "github.com/Shopify/toxiproxy/v2"
TOOLS = HERE.parent / ".tools"
BIN = TOOLS / f"toxiproxy-{VERSION}" / "bin"
SERVER = BIN / "server"
STATE = HERE / ".state"
DEFAULT_API_PORT = int(DEFAULT_API.rsplit(":", 1)[1])


def log(msg):
    print(f"[toxiproxy] {msg}", flush=True)


def install(_args=None):
    if SERVER.is_file():
        return 0
    go = shutil.which("go")
    if not go:
        raise LauncherError(
            "`go` is not on PATH: install Go 1.22 or newer (Debian: apt-get install golang, or " "https://go.dev/dl/), then run this again"
        )
    go_home = TOOLS / "go"
    env = dict(
        os.environ,
        GOBIN=str(BIN),
        GOPATH=str(go_home / "path"),
        GOMODCACHE=str(go_home / "mod"),
        GOCACHE=str(go_home / "cache"),
        GOFLAGS="-modcacherw",
        CGO_ENABLED="0",
    )
    log(f"installing Toxiproxy {VERSION} from the Go module proxy into {BIN} (about a minute)")
    result = subprocess.run(
        [go, "install", f"{MODULE}/cmd/server@{VERSION}", f"{MODULE}/cmd/cli@{VERSION}"], env=env, capture_output=True, text=True
    )
    if result.returncode != 0 or not SERVER.is_file():
        raise LauncherError(
            f"go install of Toxiproxy {VERSION} failed (exit {result.returncode}): "
            f"{result.stderr.strip()[-800:]}\nfix: check that the Go module proxy "
            f"({env.get('GOPROXY') or 'proxy.golang.org'}) is reachable, or set GOPROXY"
        )
    log(f"installed {SERVER}")
    return 0


def state_file(port):
    return STATE / f"toxiproxy-{port}.json"


def pid_is_our_server(pid):
    """True only for a live process running this checkout's Toxiproxy binary: pids are never trusted blindly."""
    try:
        return Path(f"/proc/{pid}/exe").resolve() == SERVER.resolve()
    except OSError:
        return False


def running(port):
    if not state_file(port).is_file():
        return None
    state = json.loads(state_file(port).read_text())
    return state if pid_is_our_server(state["pid"]) else None


def api(port):
    return Toxiproxy(f"http://127.0.0.1:{port}", timeout=2.0)


def start(args):
    install()
    if running(args.api_port):
        log(f"already running on 127.0.0.1:{args.api_port} (pid {running(args.api_port)['pid']})")
        return 0
    try:
        version = api(args.api_port).version()
        raise LauncherError(
            f"port {args.api_port} already serves a Toxiproxy ({version}) this launcher did not "
            f"start: use it (track parameter toxiproxy_url) or choose another --api-port"
        )
    except ToxiproxyError:
        pass
    STATE.mkdir(parents=True, exist_ok=True)
    log_path = STATE / f"toxiproxy-{args.api_port}.log"
    with open(log_path, "ab") as out:
        proc = subprocess.Popen(
            [str(SERVER), "-host", "127.0.0.1", "-port", str(args.api_port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    state_file(args.api_port).write_text(json.dumps({"pid": proc.pid, "api": f"http://127.0.0.1:{args.api_port}", "log": str(log_path)}))
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise LauncherError(f"Toxiproxy exited with {proc.returncode}; see {log_path}")
        try:
            log(f"started Toxiproxy {api(args.api_port).version()} on 127.0.0.1:{args.api_port} (pid {proc.pid})")
            return 0
        except ToxiproxyError:
            time.sleep(0.2)
    raise LauncherError(f"Toxiproxy did not answer on 127.0.0.1:{args.api_port} within 20 s; see {log_path}")


def stop(args):
    state = running(args.api_port)
    if not state:
        state_file(args.api_port).unlink(missing_ok=True)
        log(f"no Toxiproxy of ours runs on port {args.api_port}")
        return 0
    os.kill(state["pid"], signal.SIGTERM)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and pid_is_our_server(state["pid"]):
        time.sleep(0.1)
    if pid_is_our_server(state["pid"]):
        os.kill(state["pid"], signal.SIGKILL)
    state_file(args.api_port).unlink(missing_ok=True)
    log(f"stopped Toxiproxy (pid {state['pid']})")
    return 0


def status(args):
    state = running(args.api_port)
    if not state:
        log(f"no Toxiproxy of ours runs on port {args.api_port}")
        return 1
    proxies = api(args.api_port)._call("GET", "/proxies")
    log(f"pid {state['pid']}, API {state['api']}")
    for name, proxy in sorted(proxies.items()):
        toxics = ", ".join(f"{t['name']}={t['attributes']}" for t in proxy["toxics"]) or "no toxics"
        log(f"  {name}: {proxy['listen']} -> {proxy['upstream']} ({toxics})")
    return 0


def proxy(args):
    name = PROXIES[args.role]
    created = api(args.api_port).ensure_proxy(name, f"127.0.0.1:{args.listen}", f"127.0.0.1:{args.upstream}")
    log(f"proxy {name}: {created['listen']} -> {created['upstream']}")
    return 0


def clear(args):
    """Every toxic of this track (runners/shared/toxiproxy.py OUR_TOXICS) off each proxy of this track that exists: what a
    killed race can leave behind. A user's own toxics and proxies are left alone."""
    toxiproxy = api(args.api_port)
    for name in sorted(PROXIES.values()):
        if toxiproxy.proxy(name) is not None:
            toxiproxy.clear(name)
            log(f"proxy {name}: the track's toxics cleared")
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    commands = {"install": install, "start": start, "stop": stop, "status": status, "proxy": proxy, "clear": clear}
    parsers = {name: sub.add_parser(name) for name in commands}
    for name in ("start", "stop", "status", "proxy", "clear"):
        parsers[name].add_argument("--api-port", type=int, default=DEFAULT_API_PORT)
    parsers["proxy"].add_argument(
        "--role",
        choices=sorted(PROXIES),
        required=True,
        help="http: in front of a cluster's HTTP port; remote: of a remote's transport port",
    )
    parsers["proxy"].add_argument("--listen", type=int, required=True, help="loopback port clients connect to")
    parsers["proxy"].add_argument("--upstream", type=int, required=True, help="loopback port it forwards to")
    args = parser.parse_args(argv)
    try:
        return commands[args.command](args)
    except (LauncherError, ToxiproxyError) as e:
        log(f"error: {e}")
        return 2


if __name__ == "__main__":
    sys.exit(main())
