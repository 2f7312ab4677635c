"""Diversification models, one per module; importing this package registers every one in
``srdiv.registry.MODELS`` (the names ``params.yaml`` rows give as ``model``). ``base`` holds what they
share, ``ranking`` the batched inference that ranks a bundle's candidates with any of them."""

from srdiv.models import (  # noqa: F401  (imported for their registrations)
    daletor,  # DALETOR DNN, DIN, GSF scorers
    desa,
    dssa,
    initial,  # Initial
    listmle,  # ListMLE
    mdp_div,  # MDP-DIV
    mmr,  # the unsupervised baselines: MMR, PM2 and HPM2, xQuAD and HxQuAD
    pm2,
    reference,  # Random and Cosine orders
    rltr,  # R-LTR/PAMM, NTN
    xquad,
)
