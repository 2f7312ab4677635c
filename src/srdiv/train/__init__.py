"""Training: the fold protocol (``folds``), the trainer, and a job that tunes, trains and ranks one row
on one fold (``job``)."""
