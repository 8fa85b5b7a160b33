"""Replica sites for SGR-Bench demo packs: models, apps, page template."""
