/* Version query of the host library: lets an embedding engine check at run time that the
 * library it linked matches the headers it compiled against. */
#include <giouring/host/version.h>

#define GIO__STR2(x) #x
#define GIO__STR(x) GIO__STR2(x)

int gio_version(void)
{
	return GIO_VERSION;
}

const char *gio_version_string(void)
{
	return GIO__STR(GIO_VERSION_MAJOR) "." GIO__STR(GIO_VERSION_MINOR) "." GIO__STR(GIO_VERSION_PATCH);
}
