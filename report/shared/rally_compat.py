"""The one home of Rally's internals that differ between the Rallies this project runs on: 2.13.0 (the pin of
requirements.txt, elasticsearch-py 8) and Rally's master (`make test RALLY=<checkout>`, elasticsearch-py 9). Each
function takes either shape and gives the same answer; everything else uses what both Rallies share.

- `default_of`: the `default` cluster's entry of Rally's parsed --target-hosts / --client-options
  (esrally.utils.opts.TargetHosts / ClientOptions): the attribute `default` on 2.13.0; `default_or_first` on master
  (the `default` entry, or the first cluster's when none is named `default`), where `default` is gone.
- `configured_store_options`: the client options of Rally's metrics store as its configuration gives them, without
  the keys Rally's metrics store adds for its own connection (`node_class`, a keep-alive node, on master; none on
  2.13.0). The connection keeps them: the report reaches the store as Rally does.
"""

# what Rally's metrics store adds to the client options of its configuration (esrally/metrics.py, EsClientFactory):
# master sets node_class to its KeepaliveUrllib3HttpNode; 2.13.0 adds nothing
STORE_CONNECTION_KEYS = ("node_class",)


def default_of(connect_options):
    """The `default` cluster's entry of an esrally.utils.opts.TargetHosts (its hosts, [{"host", "port"}, ...]) or
    ClientOptions (its options, a dict), as the installed Rally picks it for a race."""
    if hasattr(type(connect_options), "default_or_first"):  # master
        return connect_options.default_or_first
    return connect_options.default  # 2.13.0


def configured_store_options(client_options):
    """The metrics store's client options (as Rally's metrics store hands them to its client factory) without the keys
    Rally adds for its own connection: those its configuration gives, the same on every Rally."""
    return {key: value for key, value in client_options.items() if key not in STORE_CONNECTION_KEYS}
