def merge(intervals):
    """Merge overlapping [start, end] intervals; touching ones merge too.

    >>> merge([[1, 3], [2, 6], [8, 10]])
    [[1, 6], [8, 10]]
    >>> merge([[1, 4], [4, 5]])
    [[1, 5]]
    """
    result = []
    for start, end in intervals:
        if result and start < result[-1][1]:
            result[-1][1] = end
        else:
            result.append([start, end])
    return result
