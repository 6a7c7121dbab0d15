"""pytest plugin for SQLAlchemy's suite through manx (loaded with -p sa_version_probe).

SQLAlchemy's test provisioning asks `SELECT VERSION() LIKE '%MariaDB%'` to pick its mysql or
mariadb dialect. manx answers a bare `SELECT VERSION()` itself (5.7.25-manx-..., as the
greeting), but passes this expression to the backend, which says MariaDB: the dialect then
refuses the 5.7.25 greeting ("MySQL version 5.7.25.0.1.0 is not a MariaDB variant") and not
one test runs. The probe is answered as the greeting answers it (not MariaDB), so that the
rest of the suite is measured; the inconsistency itself is reported as a finding.
"""
from sqlalchemy.dialects.mysql.base import MySQLDialect


@classmethod
def _is_mariadb_from_url(cls, url):
    return False


MySQLDialect._is_mariadb_from_url = _is_mariadb_from_url
