"""The user's project: where its conf/, suites/ and recordings/ are, and how paths in its configs resolve."""
