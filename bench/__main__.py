"""`python -m bench` (`make bench`): the review sweeps over generated trees, which need no external
repository; writes docs/bench/review_tree_size.png, review_pr_size.png and review.csv."""

import sys

from bench import bench_review

if __name__ == "__main__":
    sys.exit(bench_review.main())
