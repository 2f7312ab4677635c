"""The ``srdiv`` program: its entry point (:mod:`~srdiv.cli.launch`), the command line (:mod:`~srdiv.cli.main`)
and one module of commands per stage (``collection``, ``text``, ``features``, ``sampling``, ``train``,
``metrics``, ``report``), each with ``register(app)``; ``dvc_stages`` writes the ``dvc.yaml`` files.

The last layer: it may import any other, and none imports it. This file imports nothing, so that
:mod:`~srdiv.cli.launch` sets its signal handlers before anything heavy is read.
"""
