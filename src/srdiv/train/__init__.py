"""Training: the trainer (``trainer``), the search of a row's space (``search``), and the job that tunes and
trains one row on one fold (``tuning``) and ranks its test queries (``rank``), with what they share: the
saved model (``trained``), the rows' checks (``rows``), devices (``device``), processes (``pool``), digests
(``digests``) and records (``records``)."""
