"""Paper-style tables, plots and the results README built from ``metrics.parquet``."""
