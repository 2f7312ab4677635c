"""Training objectives (losses), one per module; importing this package registers every one in
``srdiv.registry.OBJECTIVES`` (the names ``params.yaml`` rows give as ``objective``)."""

from srdiv.objectives import (  # noqa: F401  (imported for their registrations)
    daletor,  # DALETOR smooth metric and softmax objectives
    list_pairwise,  # DSSA/DESA list-pairwise
    mle,  # ListMLE / R-LTR MLE
    pamm,  # PAMM
    reinforce,  # MDP-DIV REINFORCE
)
