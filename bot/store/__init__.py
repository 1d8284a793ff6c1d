"""The stores under the models: the disk store and its one key scheme (disk.py), the fact memo
over it (memo.py), and the evaluation (evaluations.py) and review-results (reviews.py) stores."""
