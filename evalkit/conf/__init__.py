"""evalkit's base configuration, composed under every project's conf/ through Hydra's search path (pkg://evalkit.conf)."""
