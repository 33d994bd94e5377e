"""fmapp: the explainer's services, on the app's side of the line ``fmlib`` never crosses.

The pages (``app_pages/``) draw; these modules keep what a server does for them and hold no widget:

* ``jobs`` — the server's queue of trainings and recomputations;
* ``starter`` — the FM, FwFM and DPLR runs trained on a first start;
* ``recompute`` — ``python -m fmlib reproduce …`` run again for the Teacher page;
* ``lessons`` — lesson files, their computed answers, and the class's shared answers (``lessons.classroom``);
* ``worked`` — the small worked example a page opens with;
* ``notation`` — math in plain text for select boxes and chart labels.

Everything computed comes from ``fmlib``; ``fmlib`` never imports this package (the contracts in
``pyproject.toml``, checked by ``make lint``).
"""
