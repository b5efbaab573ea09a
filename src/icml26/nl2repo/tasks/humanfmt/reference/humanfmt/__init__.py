"""humanfmt: human-friendly formatting of numbers, sizes, lists and durations."""
from .number import intcomma, intword, ordinal, apnumber
from .filesize import naturalsize, parse_size
from .lists import natural_list
from .timefmt import naturaldelta, naturaltime, format_duration
