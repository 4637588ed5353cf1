"""What the studies' runners share and declare no operation of their own: Rally's results and errors (results, wire),
the load-driver host that ran a sample (hosts), restore notes for changed cluster settings (restore), a fresh index's
body (index_body), the interleaved schedule (interleave), the coverage's answer checks (validation) and the Toxiproxy
client (toxiproxy)."""
