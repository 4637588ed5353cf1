"""The local Elasticsearch node and what runs beside it, by concern (stdlib only: it runs before the project's
virtualenv exists). The scripts in local-es/ (esnode.py, node_starts.py, toxiproxy_launcher.py, load_driver_hosts.py)
are its entry points; pyproject.toml's import-linter contracts keep its layers:

    cli | node_starts | toxiproxy_launcher | load_driver_hosts   the commands
    lifecycle                                                     start, stop, status, wipe: a cluster's processes
    command | layout                                              one node's JVM command; the cluster's nodes and config
    distribution | jdk | checks                                   the node home from Maven Central; the JDK; the machine
    shared                                                        versions, the state folder, errors, the log
"""
