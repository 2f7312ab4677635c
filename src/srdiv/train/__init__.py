from srdiv.train import pamm, reinforce  # noqa: F401  (PAMM, MDP-DIV REINFORCE objectives)
