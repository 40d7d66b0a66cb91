"""The gate: decide(policy, baseline, candidate) and what it is built from (metric comparison, release-evidence
rules, paired statistics, the Decision). Pure: no I/O, no clock, no global randomness."""
