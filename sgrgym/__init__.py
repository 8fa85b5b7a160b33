"""sgrgym: offline, deterministic harness for SeekerGym and SGR-Bench."""

__version__ = "0.1.0"
