"""MediaWiki XML dumps and their SQL side tables, read as streams.

* :mod:`~assets.wikipedia.dump.reader`: pages and site info of an XML export (schemas 0.3 to 0.11, bz2
  multistream included);
* :mod:`~assets.wikipedia.dump.sql_tables` and :mod:`~assets.wikipedia.dump.side_tables`: the
  ``page_props`` (Wikidata QIDs) and ``redirect`` tables beside a dump;
* :mod:`~assets.wikipedia.dump.forms`: the forms a dump comes in (``xml``, ``enterprise-html``), one name
  each; :mod:`~assets.wikipedia.dump.enterprise`: an Enterprise HTML dump's records;
* :mod:`~assets.wikipedia.dump.naming`: a dump's snapshot id; :mod:`~assets.wikipedia.dump.embedded`:
  the embedded default excerpt.
"""

from assets.wikipedia.dump.embedded import BGWIKI_MEMBER as EMBEDDED_BGWIKI_MEMBER
from assets.wikipedia.dump.embedded import BGWIKI_SHA256 as EMBEDDED_BGWIKI_SHA256
from assets.wikipedia.dump.embedded import FILE_NAME as EMBEDDED_FILE_NAME
from assets.wikipedia.dump.embedded import ORIGIN as EMBEDDED_ORIGIN
from assets.wikipedia.dump.embedded import SHA256 as EMBEDDED_SHA256
from assets.wikipedia.dump.embedded import SNAPSHOT_ID as EMBEDDED_SNAPSHOT_ID
from assets.wikipedia.dump.embedded import ensure_embedded_dump, ensure_wheel_member
from assets.wikipedia.dump.enterprise import (
    ENTERPRISE_NAME_RE,
    EnterpriseDumpError,
    EnterpriseRead,
    EnterpriseRecord,
    is_enterprise_dump,
    read_enterprise_dump,
)
from assets.wikipedia.dump.forms import FORMS, InputForm, dump_form
from assets.wikipedia.dump.naming import snapshot_id_for, snapshot_id_of_dump
from assets.wikipedia.dump.reader import (
    BZ2_STREAM_RE,
    DumpFormatError,
    DumpReader,
    RawPage,
    SiteInfo,
    dump_date_from_name,
    find_bz2_streams,
)
from assets.wikipedia.dump.side_tables import (
    ABSENT,
    SideTables,
    compare_redirects,
    side_tables_beside,
    write_redirect_table,
    write_wikidata_ids,
)
from assets.wikipedia.dump.sql_tables import (
    QID_RE,
    SqlDumpError,
    SqlDumpReader,
    TableReadReport,
    iter_redirect_rows,
    iter_wikidata_ids,
    unescape,
)

__all__ = [
    "ABSENT",
    "BZ2_STREAM_RE",
    "EMBEDDED_BGWIKI_MEMBER",
    "EMBEDDED_BGWIKI_SHA256",
    "EMBEDDED_FILE_NAME",
    "EMBEDDED_ORIGIN",
    "EMBEDDED_SHA256",
    "EMBEDDED_SNAPSHOT_ID",
    "ENTERPRISE_NAME_RE",
    "FORMS",
    "QID_RE",
    "DumpFormatError",
    "DumpReader",
    "EnterpriseDumpError",
    "EnterpriseRead",
    "EnterpriseRecord",
    "InputForm",
    "RawPage",
    "SideTables",
    "SiteInfo",
    "SqlDumpError",
    "SqlDumpReader",
    "TableReadReport",
    "compare_redirects",
    "dump_date_from_name",
    "dump_form",
    "ensure_embedded_dump",
    "ensure_wheel_member",
    "find_bz2_streams",
    "is_enterprise_dump",
    "iter_redirect_rows",
    "iter_wikidata_ids",
    "read_enterprise_dump",
    "side_tables_beside",
    "snapshot_id_for",
    "snapshot_id_of_dump",
    "unescape",
    "write_redirect_table",
    "write_wikidata_ids",
]
