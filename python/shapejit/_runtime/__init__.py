"""The fourth floor: the runtime boundary, what the extension's jitted
Function calls back into Python for, over the tracing values, the NumPy
table and indexing.

    arguments   a call's arguments: which are arrays (the inputs), what makes the key that picks a site
    captures    the arrays a function reaches besides its arguments, swapped for tracing values while it is traced
    patches     NumPy's creation functions and len/range given sizes while a trace is recorded
    einops      einops's backend for tracing values
    segments    a call run as compiled segments cut around its graph breaks
    calls       the Callbacks: trace, results and their spec, eager and segmented runs
"""
