"""The project's working database: engine and transactions, migrations, one module per area.

Every SQL statement of prefkit lives in this package; nothing here decides annotation policy or
computes statistics (that is :mod:`prefkit.curation.annotation` and :mod:`prefkit.curation.quality`).
"""
