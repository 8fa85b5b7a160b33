"""Site-state snapshots: record to WARC, verify, index in DuckDB, replay offline."""
