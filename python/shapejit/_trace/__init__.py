"""The first floor of the package: the tracing values and the trace they
belong to. A ``Tensor`` stands for an array of the graph being recorded, a
``SymInt`` for a size, a ``SymBool`` for a comparison of sizes; the
``TraceState`` holds the C++ tracer they add nodes to. Nothing here knows
NumPy's functions (the table above, ``shapejit._np``) or indexing: the
operators and methods a Tensor answers with are attached by
``shapejit._methods``, as JAX's ``array_methods`` attaches its own.

    dtypes      the dtypes shapejit has, and their names
    tensor      Tensor, and the kinds of it NumPy tells apart (views, scalars, arrays not yet read)
    sizes       SymInt, SymBool, SymRange
    state       TraceState, emit and as_tensor: how a node is added
    promotion   NumPy 2's promotion of operands and the dtype of a result
"""
