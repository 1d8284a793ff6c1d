"""Process machinery under the models: forked workers (worker_process.py), the evaluation pool
(evaluation_pool.py), the checks on two cores (check_split.py) and the collector policy (collector.py)."""
