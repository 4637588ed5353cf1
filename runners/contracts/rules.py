"""What a track parameter's value must be: the rules each study module declares its parameters with
(`PARAMETER_RULES = {"<parameter>": rules.integer(1), ...}`, collected by runners/contracts/parameters.py). A rule raises
ParameterError with what the parameter accepts, in the words a user reads beside the parameter's name. Stdlib only.
"""

import numbers

MAX_HDR_DIGITS = 5  # Elasticsearch accepts number_of_significant_value_digits 0..5


class ParameterError(ValueError):
    pass


def integer(minimum, maximum=None):
    def check(value):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ParameterError(f"an integer{range(minimum, maximum)}")
        if value < minimum or (maximum is not None and value > maximum):
            raise ParameterError(f"an integer{range(minimum, maximum)}")

    return check


def range(minimum, maximum):
    return f" from {minimum} to {maximum}" if maximum is not None else f" of at least {minimum}"


def positive_number(value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not value > 0:
        raise ParameterError("a positive number")  # also the message for target_throughput, whose default is none


def fraction(value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 < value < 1:
        raise ParameterError("a number between 0 and 1 (a fraction: 0.05 is 5%)")


def boolean(value):
    if not isinstance(value, bool):
        raise ParameterError("true or false")


def one_of(*choices):
    def check(value):
        if value not in choices:
            raise ParameterError(f"one of {', '.join(map(repr, choices))}")

    return check


def string(value):
    if not isinstance(value, str) or not value:
        raise ParameterError("a non-empty string")


def time_value(value):
    # Elasticsearch's refresh_interval: -1 (off) or a time value such as 30s
    if isinstance(value, int) and not isinstance(value, bool) and value == -1:
        return
    if not isinstance(value, str) or not (
        value == "-1" or value[:-1].isdigit() and value[-1] in "smhd" or value.endswith("ms") and value[:-2].isdigit()
    ):
        raise ParameterError('"-1" or a time value such as "30s"')


def names(vocabulary):
    def check(value):
        items = value.split(",") if isinstance(value, str) else value
        if not isinstance(items, list) or not items or any(item not in vocabulary for item in items):
            raise ParameterError(f"a non-empty list (or comma-separated string) of {', '.join(vocabulary)}")

    return check


def names_or_none(vocabulary):
    def check(value):
        if value != []:
            try:
                names(vocabulary)(value)
            except ParameterError:
                raise ParameterError(f"a list (or comma-separated string) of {', '.join(vocabulary)}, or [] for none") from None

    return check


def percents(value):
    if (
        not isinstance(value, list)
        or not value
        or any(isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0 <= p <= 100 for p in value)
    ):
        raise ParameterError("a non-empty list of numbers from 0 to 100")


def positive_number_or_none(value):
    if value is not None:
        positive_number(value)


def list_of(rule, description):
    def check(value):
        if not isinstance(value, list) or not value:
            raise ParameterError(f"a non-empty list of {description}")
        for item in value:
            try:
                rule(item)
            except ParameterError:
                raise ParameterError(f"a non-empty list of {description}") from None

    return check


def http_url(value):
    if not isinstance(value, str) or not value.startswith(("http://", "https://")) or value.count(":") < 2:
        raise ParameterError('an http URL with a port, e.g. "http://127.0.0.1:8474"')


def host_port_or_empty(value):
    # "" = the address Toxiproxy's proxy listens on
    host, _, port = value.rpartition(":") if isinstance(value, str) else ("", "", "")
    if value != "" and not (host and port.isdigit() and 0 < int(port) < 65536):
        raise ParameterError('host:port (e.g. "127.0.0.1:9590"), or "" for the proxy\'s own listen address')


def assertions(value):
    ok = isinstance(value, list) and all(
        isinstance(a, dict) and isinstance(a.get("property"), str) and a.get("condition") in (">", ">=", "<", "<=", "==") and "value" in a
        for a in value
    )
    if not ok:
        raise ParameterError('a list of Rally assertions such as [{"property": "hits", "condition": ">", "value": 0}]')
