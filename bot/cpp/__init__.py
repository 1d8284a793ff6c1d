"""The C, C++ and CUDA layer: the preprocessor scan and conditions (preprocessor.py) and the
declarations and assembled source facts (declarations.py) and span edits for fixes (edits.py);
each is imported from its module."""
