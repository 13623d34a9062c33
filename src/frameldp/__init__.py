"""frameldp: local differential privacy for dataframe columns.

Importing frameldp registers the ``.ldp`` accessor on pandas and polars objects.
"""
