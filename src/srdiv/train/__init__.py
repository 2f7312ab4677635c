from srdiv.train import pamm, reinforce  # noqa: F401  (PAMM, MDP-DIV REINFORCE objectives)
from srdiv.train import daletor_losses  # noqa: F401  (DALETOR smooth metric and softmax objectives)
