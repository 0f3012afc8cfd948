"""Human review of benchmark labels: what needs eyes, Label Studio tasks and exports, agreement, outcomes.

Label Studio itself (server and SDK) lives in its own environment (``.venv-review``, ``make
review-install``); only ``label_studio_bridge`` talks to it, through a subprocess, so nothing here
imports it.
"""
