/* db_int.h - the results database's connection, shared by its writer (db.c) and its table printer
 * (summary.c). Private to experiments/. */
#ifndef SP_DB_INT_H
#define SP_DB_INT_H

#include <sqlite3.h>

struct Db {
    sqlite3 *h;
    char path[1024];
};

#endif
