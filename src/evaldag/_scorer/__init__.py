"""What a scorer is: the builder, its steps, the run it scores, ``filter_run`` and thresholds.

No Hamilton and no execution here: the engine (``evaldag._engine``) runs steps and the graphs
(``evaldag._graph``) turn scorers into DAGs.
"""
