"""`python -m bench`: run every benchmark in bench/ that needs no external repository."""

from bench import bench_review

if __name__ == "__main__":
    bench_review.main()
