"""Client-matrix script for SQLAlchemy ORM over PyMySQL (tests/client_matrix.rs).

usage: sqlalchemy_check.py PORT

A declarative model of TESTDB.travelrecord, Session add/commit/rollback, queries filtering on the
shard key with bound parameters, table reflection. Prints one `step=value` line per step (or
`step=ERROR <class> <errno> <message>`) and goes on with the next step.
"""
import sys
import traceback
from decimal import Decimal

from sqlalchemy import BigInteger, Date, Integer, Numeric, String, create_engine, func, select
from sqlalchemy import MetaData, Table, exc, inspect
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

port = int(sys.argv[1])
UNICODE = "emoji 🐬🎉 CJK 中文字符 日本語 한국어 ñ"


class Base(DeclarativeBase):
    pass


class TravelRecord(Base):
    __tablename__ = "travelrecord"
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    user_id: Mapped[str | None] = mapped_column(String(100))
    traveldate = mapped_column(Date, nullable=True)
    fee: Mapped[Decimal | None] = mapped_column(Numeric(10, 2))
    days: Mapped[int | None] = mapped_column(Integer)


def errno_of(e):
    orig = getattr(e, "orig", e)
    if orig is not None and getattr(orig, "args", None) and isinstance(orig.args[0], int):
        return orig.args[0]
    return None


def step(name, fn):
    try:
        value = fn()
    except Exception as e:  # noqa: BLE001 - reported, not swallowed
        msg = str(e).replace("\n", " ")
        print(f"{name}=ERROR {type(e).__module__}.{type(e).__name__} {errno_of(e)} {msg}", flush=True)
        traceback.print_exc(file=sys.stderr)
        return None
    print(f"{name}={value}", flush=True)
    return value


engine = create_engine(f"mysql+pymysql://root:123456@127.0.0.1:{port}/TESTDB")
session = None


def connect():
    global session
    session = Session(engine)
    session.execute(select(1)).scalar_one()
    return "ok"


if step("connect", connect) is None:
    sys.exit(0)


def fmt(objs):
    return ";".join(f"{o.id}|{o.user_id}|{o.fee}|{o.days}" for o in objs)


def insert():
    session.add_all([
        TravelRecord(id=1, user_id="alice", fee=Decimal("10.50"), days=1),
        TravelRecord(id=5000001, user_id="bob 中文", fee=Decimal("20.25"), days=2),
        TravelRecord(id=10000001, user_id="carol 🐬", fee=Decimal("30.00"), days=3),
        TravelRecord(id=10000002, user_id="dave", fee=Decimal("40.00"), days=4),
    ])
    session.commit()
    return session.scalar(select(func.count()).select_from(TravelRecord))


def by_key():
    out = []
    for k in (5000001, 10000001):
        out += session.scalars(select(TravelRecord).where(TravelRecord.id == k)).all()
    session.expunge_all()
    got = session.get(TravelRecord, 10000002)
    return fmt(out) + ";get:" + fmt([got])


def order_limit():
    rows = session.scalars(select(TravelRecord).order_by(TravelRecord.id.desc()).limit(3)).all()
    return ";".join(f"{r.id}|{r.user_id}" for r in rows)


def aggregate():
    c, s, d = session.execute(
        select(func.count(TravelRecord.id), func.sum(TravelRecord.fee), func.sum(TravelRecord.days))
    ).one()
    return f"{c}|{s}|{d}"


def count():
    return session.scalar(select(func.count()).select_from(TravelRecord))


def user(k):
    session.expire_all()
    return session.scalar(select(TravelRecord.user_id).where(TravelRecord.id == k))


def tx_commit():
    session.add(TravelRecord(id=2, user_id="tx", fee=Decimal("1.00"), days=1))
    session.add(TravelRecord(id=5000002, user_id="tx", fee=Decimal("1.00"), days=1))
    session.commit()
    return count()


def tx_rollback():
    session.add(TravelRecord(id=3, user_id="gone"))
    session.add(TravelRecord(id=10000003, user_id="gone"))
    session.get(TravelRecord, 1).user_id = "changed"
    session.flush()
    inside = f"{count()}|{user(1)}"
    session.rollback()
    return f"{inside}|{count()}|{user(1)}"


def unicode_roundtrip():
    session.add(TravelRecord(id=5000007, user_id=UNICODE))
    session.commit()
    got = user(5000007)
    return f"{got}|{'same' if got == UNICODE else 'DIFFERENT'}"


def duplicate():
    session.add(TravelRecord(id=10000001, user_id="dup"))
    try:
        session.commit()
    except exc.IntegrityError as e:
        session.rollback()
        return f"IntegrityError {errno_of(e)}"
    return "no error"


def update_delete():
    r = session.get(TravelRecord, 10000002)
    r.days = 44
    session.commit()
    session.delete(session.get(TravelRecord, 2))
    session.commit()
    session.expire_all()
    return f"{session.get(TravelRecord, 10000002).days}|{session.get(TravelRecord, 2)}|{count()}"


def reflect():
    md = MetaData()
    t = Table("travelrecord", md, autoload_with=engine)
    names = [c.name for c in t.columns]
    pk = [c.name for c in t.primary_key.columns]
    tables = sorted(inspect(engine).get_table_names())
    return f"{','.join(names)}|pk={','.join(pk)}|tables={','.join(tables)}"


step("insert", insert)
step("by_key", by_key)
step("order_limit", order_limit)
step("aggregate", aggregate)
step("tx_commit", tx_commit)
step("tx_rollback", tx_rollback)
step("unicode", unicode_roundtrip)
step("duplicate", duplicate)
step("after_error", lambda: user(10000001))
step("update_delete", update_delete)
step("reflect", reflect)
session.close()
print("done", flush=True)
