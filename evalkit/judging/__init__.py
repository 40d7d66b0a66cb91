"""Judging helpers a suite's checks use: rubrics with anchored levels, pairwise judging with swapped order,
and slices of a run."""
