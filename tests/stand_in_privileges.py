"""The secured stand-in's authorization (tests/secure_stand_in.py): Elasticsearch 8's privileges, for those modelled, as
sets of action patterns; which action a request is (ACTIONS); whether an identity's roles grant it (authorize); and
the _has_privileges answer."""

import collections
import fnmatch
import re
import urllib.parse

# name -> (action patterns it grants, action patterns it does not): Elasticsearch 8's definitions, for those modelled.
CLUSTER_PRIVILEGES = {
    "none": ((), ()),
    "all": (("cluster:*",), ()),
    "manage": (("cluster:*",), ("cluster:admin/xpack/security/*",)),
    "monitor": (("cluster:monitor/*",), ()),
    "manage_security": (("cluster:admin/xpack/security/*",), ()),
    "manage_api_key": (("cluster:admin/xpack/security/api_key/*",), ()),
    "create_snapshot": (
        ("cluster:admin/snapshot/create", "cluster:admin/snapshot/get", "cluster:admin/snapshot/status*", "cluster:admin/repository/get"),
        (),
    ),
    "monitor_snapshot": (("cluster:admin/snapshot/get", "cluster:admin/snapshot/status*", "cluster:admin/repository/get"), ()),
}
INDEX_PRIVILEGES = {
    "none": ((), ()),
    "all": (("indices:*",), ()),
    "manage": (("indices:monitor/*", "indices:admin/*", "indices:data/read/field_caps*"), ()),
    "monitor": (("indices:monitor/*",), ()),
    "view_index_metadata": (
        (
            "indices:admin/aliases/get",
            "indices:admin/get",
            "indices:admin/mappings/fields/get*",
            "indices:admin/mappings/get",
            "indices:admin/shards/search_shards",
            "indices:admin/validate/query*",
            "indices:monitor/settings/get",
            "indices:admin/resolve/index",
            "indices:data/read/field_caps*",
        ),
        (),
    ),
    "create_index": (("indices:admin/create", "indices:admin/auto_create", "indices:admin/data_stream/create"), ()),
    "delete_index": (("indices:admin/delete", "indices:admin/data_stream/delete"), ()),
    "maintenance": (("indices:admin/refresh*", "indices:admin/flush*", "indices:admin/synced_flush", "indices:admin/forcemerge*"), ()),
    "auto_configure": (("indices:admin/auto_create", "indices:admin/mapping/auto_put"), ()),
    "read": (("indices:data/read/*", "indices:admin/resolve/index"), ()),
    "write": (("indices:data/write/*", "indices:admin/mapping/auto_put"), ()),
    "index": (
        ("indices:data/write/index*", "indices:data/write/update*", "indices:data/write/bulk*", "indices:admin/mapping/auto_put"),
        (),
    ),
    "create": (("indices:data/write/index*", "indices:data/write/bulk*", "indices:admin/mapping/auto_put"), ()),
    "create_doc": (("indices:data/write/index*", "indices:data/write/bulk*", "indices:admin/mapping/auto_put"), ()),
    "delete": (("indices:data/write/delete*", "indices:data/write/bulk*"), ()),
}

Rule = collections.namedtuple("Rule", "methods path action kind")

# method and path (without the query) -> the action Elasticsearch checks; `index` rules name the indices in group "index"
ACTIONS = [
    Rule(("PUT", "POST"), r"/_cluster/settings", "cluster:admin/settings/update", "cluster"),
    Rule(("GET",), r"/_cluster/settings", "cluster:monitor/settings", "cluster"),
    Rule(("GET",), r"/_nodes/stats(/[^/]*)?", "cluster:monitor/nodes/stats", "cluster"),
    Rule(("PUT", "POST"), r"/_snapshot/[^/_][^/]*", "cluster:admin/repository/put", "cluster"),
    Rule(("PUT", "POST"), r"/_snapshot/[^/_][^/]*/[^/_][^/]*", "cluster:admin/snapshot/create", "cluster"),
    Rule(("POST",), r"/_snapshot/[^/_][^/]*/[^/_][^/]*/_restore", "cluster:admin/snapshot/restore", "cluster"),
    Rule(("PUT", "POST"), r"/_security/user/[^/_][^/]*", "cluster:admin/xpack/security/user/put", "cluster"),
    Rule(("PUT", "POST"), r"/_security/role/[^/_][^/]*", "cluster:admin/xpack/security/role/put", "cluster"),
    Rule(("PUT", "POST"), r"/_security/api_key", "cluster:admin/xpack/security/api_key/create", "cluster"),
    Rule(("PUT",), r"/(?P<index>[^_/][^/]*)/?", "indices:admin/create", "index"),
    Rule(("DELETE",), r"/(?P<index>[^_/][^/]*)/?", "indices:admin/delete", "index"),
]


def _prefix(pattern):
    return (pattern[:-1], True) if pattern.endswith("*") else (pattern, False)


def _covers(outer, inner):
    """Does action pattern `outer` match every action `inner` matches? (patterns: a name, or a prefix and `*`)"""
    (o, o_wild), (i, _) = _prefix(outer), _prefix(inner)
    return i.startswith(o) if o_wild else outer == inner


def _meets(a, b):
    """Is there an action both patterns match?"""
    (a, a_wild), (b, b_wild) = _prefix(a), _prefix(b)
    return (a_wild and b.startswith(a)) or (b_wild and a.startswith(b)) or a == b


def _privilege(table, kind, name):
    """(granted, excluded) patterns of a named privilege or of an action pattern used as one, as Elasticsearch allows."""
    if name in table:
        return table[name]
    if name.startswith("cluster:" if kind == "cluster" else "indices:") and "*" not in name[:-1]:
        return (name,), ()
    names = ",".join(sorted(table))
    if kind == "cluster":
        reason = f"unknown cluster privilege [{name}]. a privilege must be either one of the predefined cluster privilege names [{names}]"
        raise _Unknown(reason + " or a pattern over one of the available cluster actions")
    reason = f"unknown index privilege [{name}]. a privilege must be either one of the predefined fixed indices privileges [{names}]"
    raise _Unknown(reason + " or a pattern over one of the available index actions")


class _Unknown(ValueError):
    pass


def grants(table, kind, privilege, action):
    granted, excluded = _privilege(table, kind, privilege)
    return any(_covers(p, action) for p in granted) and not any(_covers(p, action) for p in excluded)


def implies(table, kind, held, requested):
    """Do the `held` privileges together grant every action privilege `requested` grants?"""
    wanted, unwanted = _privilege(table, kind, requested)

    def covered(pattern, by):
        granted, excluded = _privilege(table, kind, by)
        return any(_covers(g, pattern) for g in granted) and all(
            any(_covers(u, e) for u in unwanted) for e in excluded if _meets(e, pattern)
        )

    return all(any(covered(pattern, privilege) for privilege in held) for pattern in wanted)


def _by_access_level(table, kind, names):
    """Elasticsearch's order: by how many other privileges each implies, then by name ("[create_index,manage,all]")."""
    level = {n: sum(implies(table, kind, [n], other) for other in table if other != n) for n in names}
    return sorted(names, key=lambda n: (level[n], n))


def granted_by(kind, action):
    table = CLUSTER_PRIVILEGES if kind == "cluster" else INDEX_PRIVILEGES
    return _by_access_level(table, kind, [n for n in table if grants(table, kind, n, action)])


def index_privileges(identity, index):
    """The privileges an identity holds on an index name (or pattern): those of every group whose patterns match it."""
    return [p for names, privileges in identity.indices if any(fnmatch.fnmatchcase(index, n) for n in names) for p in privileges]


def authorize(identity, method, path):
    """None if `identity` may send `method path`, else the 403 reason Elasticsearch gives."""
    route = urllib.parse.urlsplit(path).path
    for rule in ACTIONS:
        match = re.fullmatch(rule.path, route)
        if method not in rule.methods or not match:
            continue
        who = f"API key id [{identity.api_key_id}] of user [{identity.name}]" if identity.is_api_key else f"user [{identity.name}]"
        if identity.roles and not identity.is_api_key:
            who += f" with effective roles [{','.join(identity.roles)}]"
        if rule.kind == "cluster":
            if any(grants(CLUSTER_PRIVILEGES, "cluster", p, rule.action) for p in identity.cluster):
                return None
            privileges = ",".join(granted_by("cluster", rule.action))
            return f"action [{rule.action}] is unauthorized for {who}, this action is granted by the cluster privileges [{privileges}]"
        names = urllib.parse.unquote(match["index"]).split(",")
        denied = [n for n in names if not any(grants(INDEX_PRIVILEGES, "index", p, rule.action) for p in index_privileges(identity, n))]
        if not denied:
            return None
        return (
            f"action [{rule.action}] is unauthorized for {who} on indices [{','.join(denied)}], "
            f"this action is granted by the index privileges [{','.join(granted_by('index', rule.action))}]"
        )
    return None


def has_privileges(identity, request):
    """Elasticsearch's answer to _has_privileges for `request` ({"cluster": [...], "index": [{"names", "privileges"}]})."""
    cluster = {p: implies(CLUSTER_PRIVILEGES, "cluster", identity.cluster, p) for p in request.get("cluster", [])}
    index = {}
    for group in request.get("index", []):
        names = [group["names"]] if isinstance(group["names"], str) else group["names"]
        for name in names:
            held = index_privileges(identity, name)
            answers = index.setdefault(name, {})
            for privilege in group.get("privileges", []):
                answers[privilege] = implies(INDEX_PRIVILEGES, "index", held, privilege)
    every = all(cluster.values()) and all(all(answers.values()) for answers in index.values())
    return {"username": identity.name, "has_all_requested": every, "cluster": cluster, "index": index, "application": {}}
