"""The GPU smoke runner (`pr-check smoke`): machine facts, the link contract, the AOTInductor canary
and the host under test, written as one JSON report.

This package runs on the GPU machine, often without pr-check's other dependencies, so it needs only the
standard library; pyelftools is used when installed, with `nm`/`readelf` as the fallback.
"""
