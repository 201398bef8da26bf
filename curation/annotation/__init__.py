"""The annotation process: task kinds, task creation, queue policy, the workflow the app calls,
label files in and out, guidelines.

Decides what a label means and who labels what; never writes SQL (that goes through
:mod:`prefkit.curation.store`) and never imports the app or the CLI.
"""
