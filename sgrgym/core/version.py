"""The package version (as in pyproject.toml): run cards and manifests record it."""

__version__ = "0.1.0"
