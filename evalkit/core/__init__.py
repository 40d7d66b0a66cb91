"""The shared data layer: config, policy, eval key, dataset and run report models, errors and small primitives.

Everything else imports from here; nothing here imports from another evalkit subpackage.
"""
