import sys

from bench.seed_prs import main

if __name__ == "__main__":
    sys.exit(main())
