"""An SQLAlchemy ORM application over PyMySQL, run once against a MySQL-backed and once against
a PostgreSQL-backed schema (tests/client_matrix.rs): the two transcripts must be equal.

usage: sqlalchemy_orm.py PORT USER PASSWORD SCHEMA

The schema keeps `sa_customers` as a global table and `sa_orders` sharded by id (mod-long over
three dataNodes); `sa_notes` lands on the schema's default dataNode. Steps: create_all, CRUD
through a relationship, joins, eager loading, aggregates, a rolled-back unit of work, types
(Boolean, Numeric, DateTime, Date, Text, LargeBinary, BigInteger), reflection. Prints one
`step=value` line per step (or `step=ERROR <class> <errno> <message>`) and goes on.
"""
import datetime
import sys
import traceback
from decimal import Decimal

from sqlalchemy import (
    BigInteger,
    Boolean,
    Date,
    DateTime,
    ForeignKey,
    Integer,
    LargeBinary,
    Numeric,
    String,
    Text,
    create_engine,
    func,
    inspect,
    select,
)
from sqlalchemy.orm import (
    DeclarativeBase,
    Mapped,
    Session,
    mapped_column,
    relationship,
    selectinload,
)

port, user, password, schema = sys.argv[1:5]


class Base(DeclarativeBase):
    pass


class Customer(Base):
    __tablename__ = "sa_customers"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    name: Mapped[str] = mapped_column(String(50))
    vip: Mapped[bool] = mapped_column(Boolean, default=False)
    since = mapped_column(Date, nullable=True)
    orders: Mapped[list["Order"]] = relationship(back_populates="customer", order_by="Order.id")


class Order(Base):
    __tablename__ = "sa_orders"
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    customer_id: Mapped[int] = mapped_column(ForeignKey("sa_customers.id"))
    amount: Mapped[Decimal] = mapped_column(Numeric(10, 2))
    placed_at = mapped_column(DateTime, nullable=True)
    shipped: Mapped[bool] = mapped_column(Boolean, default=False)
    customer: Mapped[Customer] = relationship(back_populates="orders")


class Note(Base):
    __tablename__ = "sa_notes"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    body = mapped_column(Text)
    blob = mapped_column(LargeBinary, nullable=True)


def errno_of(e):
    orig = getattr(e, "orig", e)
    if orig is not None and getattr(orig, "args", None) and isinstance(orig.args[0], int):
        return orig.args[0]
    return None


def step(name, fn):
    try:
        value = fn()
    except Exception as e:  # noqa: BLE001 - reported, not swallowed
        msg = str(e).replace("\n", " ")[:300]
        print(f"{name}=ERROR {type(e).__module__}.{type(e).__name__} {errno_of(e)} {msg}", flush=True)
        traceback.print_exc(file=sys.stderr)
        return None
    print(f"{name}={value}", flush=True)
    return value


engine = create_engine(f"mysql+pymysql://{user}:{password}@127.0.0.1:{port}/{schema}")
session = Session(engine)


def tables():
    return sorted(t for t in inspect(engine).get_table_names() if t.startswith("sa_"))


def create_all():
    Base.metadata.drop_all(engine)
    Base.metadata.create_all(engine)
    return tables()


def insert():
    ann = Customer(id=1, name="Ann", vip=True, since=datetime.date(2020, 2, 29))
    bob = Customer(id=2, name="Bob")
    ann.orders = [
        Order(id=i, amount=Decimal(f"{i}.50"), placed_at=datetime.datetime(2024, 1, i, 12, 0, 0))
        for i in (1, 2, 3, 4)
    ]
    bob.orders = [Order(id=5, amount=Decimal("99.99"), shipped=True), Order(id=6, amount=Decimal("0.01"))]
    session.add_all([ann, bob])
    session.add_all([Note(body="first note"), Note(body="second", blob=bytes(range(256)))])
    session.commit()
    return session.scalar(select(func.count()).select_from(Order))


def lazy_load():
    session.expire_all()
    ann = session.get(Customer, 1)
    return ";".join(f"{o.id}|{o.amount}|{o.placed_at}|{o.shipped}" for o in ann.orders) + f"|vip={ann.vip}"


def eager_load():
    session.expunge_all()
    customers = session.scalars(
        select(Customer).options(selectinload(Customer.orders)).order_by(Customer.id)
    ).all()
    return ";".join(f"{c.name}:{','.join(str(o.id) for o in c.orders)}" for c in customers)


def join():
    rows = session.execute(
        select(Customer.name, Order.id, Order.amount)
        .join(Order.customer)
        .where(Order.amount > Decimal("3"))
        .order_by(Order.id)
    ).all()
    return ";".join(f"{n}|{i}|{a}" for n, i, a in rows)


def aggregate():
    rows = session.execute(
        select(Order.customer_id, func.count(Order.id), func.sum(Order.amount), func.max(Order.placed_at))
        .group_by(Order.customer_id)
        .order_by(Order.customer_id)
    ).all()
    return ";".join("|".join(str(v) for v in r) for r in rows)


def booleans():
    shipped = session.scalars(select(Order.id).where(Order.shipped == True).order_by(Order.id)).all()  # noqa: E712
    vips = session.scalars(select(Customer.name).where(Customer.vip.is_(True))).all()
    return f"{shipped}|{vips}"


def update():
    o = session.get(Order, 6)
    o.amount = Decimal("6.66")
    o.shipped = True
    session.commit()
    session.expire_all()
    o = session.get(Order, 6)
    return f"{o.amount}|{o.shipped}"


def rollback():
    session.add(Order(id=7, customer_id=2, amount=Decimal("7.00")))
    session.get(Customer, 1).name = "Changed"
    session.flush()
    inside = session.scalar(select(func.count()).select_from(Order))
    session.rollback()
    session.expire_all()
    after = session.scalar(select(func.count()).select_from(Order))
    return f"{inside}|{after}|{session.get(Customer, 1).name}"


def delete():
    session.delete(session.get(Order, 1))
    session.commit()
    return session.scalars(select(Order.id).order_by(Order.id)).all()


def notes():
    session.expire_all()
    rows = session.scalars(select(Note).order_by(Note.id)).all()
    return ";".join(f"{n.id}|{n.body}|{None if n.blob is None else n.blob == bytes(range(256))}" for n in rows)


def reflect():
    insp = inspect(engine)
    out = []
    for table in ("sa_customers", "sa_orders", "sa_notes"):
        cols = ",".join(
            f"{c['name']}:{str(c['type']).lower()}:{'null' if c['nullable'] else 'notnull'}"
            for c in insp.get_columns(table)
        )
        pk = ",".join(insp.get_pk_constraint(table)["constrained_columns"])
        out.append(f"{table}({cols})pk={pk}")
    return ";".join(out)


step("create_all", create_all)
step("insert", insert)
step("lazy_load", lazy_load)
step("eager_load", eager_load)
step("join", join)
step("aggregate", aggregate)
step("booleans", booleans)
step("update", update)
step("rollback", rollback)
step("delete", delete)
step("notes", notes)
step("reflect", reflect)
session.close()
step("drop_all", lambda: Base.metadata.drop_all(engine) or tables())
print("done", flush=True)
