"""evalkit's launchers as Hydra plugins: Hydra instantiates launchers only from the `hydra_plugins` package.

The classes are declared here; what they do is in evalkit/sweeps/launchers.py. Without the `launchers` extra
(hydra-submitit-launcher) there is nothing to extend and this package defines nothing.
"""
