"""The text index below the collections: tokenisation (``analysis``) and sparse BM25 / query-likelihood
scoring (``sparse``), which collection builders use for their initial runs and the text stages for
pseudo-documents and features."""
