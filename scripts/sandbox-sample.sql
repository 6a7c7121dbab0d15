-- Mycat classic sample tables, loaded by scripts/sandbox.sh into db1, db2
-- and db3 on the sandbox MariaDB primary (and from there replicated to the
-- replica). Must stay idempotent: it is re-applied whenever this file changes.
-- No USE statement here: the target database is chosen by the loader.

CREATE TABLE IF NOT EXISTS travelrecord (
    id         BIGINT        NOT NULL PRIMARY KEY,
    user_id    VARCHAR(100),
    traveldate DATE,
    fee        DECIMAL(10,2),
    days       INT
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci;

CREATE TABLE IF NOT EXISTS hotnews (
    id      BIGINT       NOT NULL PRIMARY KEY,
    title   VARCHAR(200),
    content TEXT
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci;

CREATE TABLE IF NOT EXISTS employee (
    id          INT          NOT NULL PRIMARY KEY,
    name        VARCHAR(100),
    sharding_id INT
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci;

CREATE TABLE IF NOT EXISTS company (
    id   INT          NOT NULL PRIMARY KEY,
    name VARCHAR(100)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci;

CREATE TABLE IF NOT EXISTS goods (
    id    INT           NOT NULL PRIMARY KEY,
    name  VARCHAR(100),
    price DECIMAL(10,2)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci;
