"""The Label Studio configs of the built-in task kinds, one module each (named like the kind), each
holding its config as ``CONFIG``. Importing this package imports none of them: a kind names its config
(``TaskKind.labelstudio_config = "prefkit.annotate_app.labelstudio.kinds.<kind>:CONFIG"``), which the
bridge imports when it first needs it."""
