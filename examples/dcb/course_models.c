/* The decision models of the DCB example "course subscriptions" (course_models.h). */
#include "course_models.h"

#define COUNT_OF(array) (uint32_t)(sizeof(array) / sizeof((array)[0]))

/* `event.data.capacity` */
static reef_cbor course_defined_capacity(reef_cbor state, const reef_event* event,
                                         const dcb_model* model) {
  (void)state;
  (void)model;
  return dcb_number_value(dcb_data_number(event, "capacity"));
}

/* `event.data.newCapacity` */
static reef_cbor capacity_changed(reef_cbor state, const reef_event* event,
                                  const dcb_model* model) {
  (void)state;
  (void)model;
  return dcb_number_value(dcb_data_number(event, "newCapacity"));
}

static const dcb_handler kCourseExists[] = {{"CourseDefined", dcb_apply_true}};
static const dcb_handler kCourseCapacity[] = {{"CourseDefined", course_defined_capacity},
                                              {"CourseCapacityChanged", capacity_changed}};
static const dcb_handler kCountSubscriptions[] = {
    {"StudentSubscribedToCourse", dcb_apply_increment}};
static const dcb_handler kAlreadySubscribed[] = {{"StudentSubscribedToCourse", dcb_apply_true}};

dcb_model course_exists(reef_str course_id) {
  dcb_model model = {
      .name = "courseExists",
      .initial = reef_value_bool(false),
      .handlers = kCourseExists,
      .handler_count = COUNT_OF(kCourseExists),
      .tags = {course_tag(course_id)},
      .tag_count = 1,
      .params = {course_id},
  };
  return model;
}

dcb_model course_capacity(reef_str course_id) {
  dcb_model model = {
      .name = "courseCapacity",
      .initial = reef_value_int(0),
      .handlers = kCourseCapacity,
      .handler_count = COUNT_OF(kCourseCapacity),
      .tags = {course_tag(course_id)},
      .tag_count = 1,
      .params = {course_id},
  };
  return model;
}

dcb_model number_of_course_subscriptions(reef_str course_id) {
  dcb_model model = {
      .name = "numberOfCourseSubscriptions",
      .initial = reef_value_int(0),
      .handlers = kCountSubscriptions,
      .handler_count = COUNT_OF(kCountSubscriptions),
      .tags = {course_tag(course_id)},
      .tag_count = 1,
      .params = {course_id},
  };
  return model;
}

dcb_model number_of_student_subscriptions(reef_str student_id) {
  dcb_model model = {
      .name = "numberOfStudentSubscriptions",
      .initial = reef_value_int(0),
      .handlers = kCountSubscriptions,
      .handler_count = COUNT_OF(kCountSubscriptions),
      .tags = {student_tag(student_id)},
      .tag_count = 1,
      .params = {student_id},
  };
  return model;
}

dcb_model student_already_subscribed(reef_str student_id, reef_str course_id) {
  dcb_model model = {
      .name = "studentAlreadySubscribed",
      .initial = reef_value_bool(false),
      .handlers = kAlreadySubscribed,
      .handler_count = COUNT_OF(kAlreadySubscribed),
      .tags = {student_tag(student_id), course_tag(course_id)},
      .tag_count = 2,
      .params = {student_id, course_id},
  };
  return model;
}
