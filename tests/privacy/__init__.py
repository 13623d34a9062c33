"""The privacy-invariant suite (issue 13): two different inputs or executions never get linked
noise, in every way a mechanism can be applied; only a keyed re-run of the same job on the same
row repeats a report."""
