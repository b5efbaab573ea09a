"""Lists in prose."""


def natural_list(items, conjunction="and", oxford=True, limit=None):
    words = [str(x) for x in items]
    if limit is not None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"limit must be a positive integer, got {limit!r}")
        if len(words) > limit:
            rest = len(words) - limit
            words = words[:limit] + [f"{rest} more"]
    if not words:
        return ""
    if len(words) == 1:
        return words[0]
    if len(words) == 2:
        return f"{words[0]} {conjunction} {words[1]}"
    comma = "," if oxford else ""
    return f"{', '.join(words[:-1])}{comma} {conjunction} {words[-1]}"
