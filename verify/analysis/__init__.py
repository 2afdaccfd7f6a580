r"""Analysis: what a run shows, read with error bars or certified.

* :mod:`~verify.analysis.observed_limits` — observed limits and fitted rates;
* :mod:`~verify.analysis.equilibria` — equilibria and the classification of a run's end;
* :mod:`~verify.analysis.graph` — attention and hardmax graphs, leaders, clusters;
* :mod:`~verify.analysis.leader_map` — the certified leader map at a checkpoint;
* :mod:`~verify.analysis.end_certificates` — certificates that the end will not change;
* :mod:`~verify.analysis.summary` — what ``verify simulate`` reports about a run;
* :mod:`~verify.analysis.evidence` — small plain evidence (rounded numbers, figure data).
"""
