"""Reports: a race's race.json and its cluster-metrics records as the seed study's tables and charts."""
