"""The run spine: datasets and manifests, recordings and their journal, the suite's task, executing calls,
the pytest plugin and the runner that writes the run report."""
